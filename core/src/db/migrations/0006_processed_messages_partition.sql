-- Where and by whom each command was handled (failover measurements, operators).
ALTER TABLE processed_messages ADD COLUMN commands_partition integer;
ALTER TABLE processed_messages ADD COLUMN handled_by text;
