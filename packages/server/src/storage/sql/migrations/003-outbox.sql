-- Quire storage schema, version 3: the outbox, work written in a request's transaction and
-- applied after commit by a drainer (the history plugin's entries). `seq` gives the order
-- per (topic, key); `permissions` is the snapshot of the ACEs the writer asked to keep,
-- as that transaction saw them: `{uri: {permission: [principals]}}`.
CREATE TABLE outbox (
  seq         BIGSERIAL PRIMARY KEY,
  topic       TEXT NOT NULL,
  key         TEXT COLLATE "C" NOT NULL,
  payload     JSONB NOT NULL,
  permissions JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX outbox_topic_key_seq ON outbox (topic, key, seq);
