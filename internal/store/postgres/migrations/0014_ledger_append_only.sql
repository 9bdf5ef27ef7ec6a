-- The ledger is append-only, and now the database says so: no statement
-- may update, delete or truncate ledger_tx. (The foreign key from
-- ledger_posting.tx_seq stays: dropping it would save a few per-row checks
-- per billing pass, not worth an unchecked reference in the ledger.)
CREATE FUNCTION ledger_tx_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_tx is append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER ledger_tx_append_only BEFORE UPDATE OR DELETE ON ledger_tx
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_tx_append_only();
CREATE TRIGGER ledger_tx_no_truncate BEFORE TRUNCATE ON ledger_tx
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_tx_append_only();
