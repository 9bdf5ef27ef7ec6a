-- Spend limits a customer sets: a daily and a monthly cap on usage debits
-- (0: none), and whether reaching one stops running instances too.
ALTER TABLE accounts ADD COLUMN daily_cap_fen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN monthly_cap_fen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN stop_at_cap BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX ledger_tx_customer_debits ON ledger_tx (customer, at) WHERE op = 'debit';
