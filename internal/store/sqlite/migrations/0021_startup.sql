-- Issue 16: an instance's startup command and its latest status.
--
-- startup_command NULL runs the image's own entrypoint and command, ''
-- none, anything else a shell line run with /bin/sh -c under the
-- instance's init. The startup_* status columns are the agent's latest
-- report; startup_event_key names the exit or failure whose instance
-- event was recorded (once per exit).
ALTER TABLE instances ADD COLUMN startup_command TEXT;
ALTER TABLE instances ADD COLUMN startup_state TEXT NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN startup_argv TEXT NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN startup_started_at TEXT;
ALTER TABLE instances ADD COLUMN startup_exited_at TEXT;
ALTER TABLE instances ADD COLUMN startup_exit_code INTEGER;
ALTER TABLE instances ADD COLUMN startup_signal TEXT NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN startup_error TEXT NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN startup_reported_at TEXT;
ALTER TABLE instances ADD COLUMN startup_event_key TEXT NOT NULL DEFAULT '';
