-- Placeholder: this number belongs to another branch of issue 14 (0019_reserved_sec_pay);
-- this file only keeps the numbering without gaps until that branch is
-- merged, and is deleted then.
SELECT 1;
