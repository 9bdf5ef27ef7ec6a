-- Price versions: the rating engine's price lists, each in force from its
-- effective time. Only ever added to.
CREATE TABLE price_versions (
    id           TEXT NOT NULL PRIMARY KEY,
    effective_at TEXT NOT NULL UNIQUE,
    document     TEXT NOT NULL,
    note         TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;
