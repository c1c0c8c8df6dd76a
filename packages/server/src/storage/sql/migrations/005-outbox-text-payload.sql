-- Quire storage schema, version 5: a cheaper outbox insert, the one statement the history adds
-- to a write. The payload is kept as the JSON text the server sent, parsed once when drained
-- (after the response) instead of when inserted; and the primary key (topic, key, seq) serves
-- the drain's scan, so an insert maintains one index instead of two.
ALTER TABLE outbox ALTER COLUMN payload TYPE TEXT USING payload::text;
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;
DROP INDEX outbox_topic_key_seq;
ALTER TABLE outbox ADD PRIMARY KEY (topic, key, seq);
