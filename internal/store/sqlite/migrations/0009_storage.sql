-- Storage charges: the last day (Asia/Shanghai, 2026-11-28) a volume's
-- storage was charged for; '' before the first charge.
ALTER TABLE volumes ADD COLUMN charged_through TEXT NOT NULL DEFAULT '';
