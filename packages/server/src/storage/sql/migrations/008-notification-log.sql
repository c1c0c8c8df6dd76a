-- Quire storage schema, version 7: notifications between processes can also be kept in a table.
-- Processes tell each other what they changed with NOTIFY (the shared read cache, the change
-- feed). A process that cannot LISTEN (it reaches PostgreSQL only through a transaction pooler,
-- where a LISTEN lands on whichever server connection the pooler lends) reads them from here
-- instead (sql/drivers/pg-notifications.ts): while such a process is registered below, every
-- notification is also a row, written by the statement that sends it, so in the same transaction.
-- Keyed by the writing transaction's id: a poller reads the rows of the transactions its last
-- snapshot did not see (pg-notifications.ts), so none can commit behind it.
CREATE TABLE notifications (
  xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id         bigserial,
  channel    text NOT NULL,
  payload    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (xid, id)
);

-- Rows older than a few minutes are deleted; the highest xid deleted is kept here, so that a
-- poller whose cursor is below it knows it may have missed some (it then starts over).
CREATE TABLE notifications_pruned (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  through   xid8 NOT NULL
);
INSERT INTO notifications_pruned (through) VALUES ('0');

-- The processes that poll, each with the last time it said so: while one is recent, the others
-- write their notifications into the table too (else they do not, and NOTIFY costs no write).
CREATE TABLE notification_pollers (
  poller    text PRIMARY KEY,
  seen      timestamptz NOT NULL
);
