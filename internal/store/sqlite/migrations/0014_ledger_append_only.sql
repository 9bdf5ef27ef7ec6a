-- The ledger is append-only, and now the database says so: no statement
-- may update or delete a ledger transaction (numbered like PostgreSQL's
-- 0014, which does the same).
CREATE TRIGGER ledger_tx_no_update BEFORE UPDATE ON ledger_tx
BEGIN
    SELECT RAISE(ABORT, 'ledger_tx is append-only: UPDATE refused');
END;
CREATE TRIGGER ledger_tx_no_delete BEFORE DELETE ON ledger_tx
BEGIN
    SELECT RAISE(ABORT, 'ledger_tx is append-only: DELETE refused');
END;
