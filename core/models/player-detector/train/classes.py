"""The detector's classes, in output order (no JAX import, so evaluation tools need only numpy)."""

CLASS_NAMES = ["player", "goalkeeper", "referee", "ball"]
