-- When an account fell into arrears (NULL: not in arrears), and the last
-- release notice sent ('' none, '72h', '24h').
ALTER TABLE accounts ADD COLUMN arrears_since TIMESTAMPTZ;
ALTER TABLE accounts ADD COLUMN arrears_notice TEXT NOT NULL DEFAULT '';
