-- Workers (0200–0299): stage outputs in the file catalog. An output's
-- identity is (job_id, output_key), where output_key is the logical key
-- `<org>/<match>/<stage>/<model_version>/<name…>` (stage and model version
-- are in it); `file_id`/`object_key` stay the name of the bytes on their SE.
-- A re-run that produces the same bytes finds its row; other bytes replace it.
ALTER TABLE files
  ADD COLUMN output_key     text,
  ADD COLUMN job_id         text,
  ADD COLUMN stage          text,
  ADD COLUMN model_version  text,
  ADD COLUMN content_type   text;

CREATE UNIQUE INDEX files_stage_output ON files (job_id, output_key) WHERE output_key IS NOT NULL;
