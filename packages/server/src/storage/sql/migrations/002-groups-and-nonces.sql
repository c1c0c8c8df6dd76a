-- Quire storage schema, version 2: group membership and single-use pagination tokens.
-- A user's principals are expanded at request time with the URIs of the groups listing one
-- of its principals (the user id, system.Authenticated). Keyed by group URI (C collation, so
-- cascade deletes by URI prefix use the primary key) and indexed by member.
CREATE TABLE group_members (
  group_uri TEXT COLLATE "C" NOT NULL,
  principal TEXT NOT NULL,
  PRIMARY KEY (group_uri, principal)
);
CREATE INDEX group_members_principal ON group_members (principal);

-- Single-use pagination tokens of plural DELETE (protocol-reference §7.7): a nonce is stored
-- when its Next-Page is issued and consumed when followed; expired ones are swept on use.
CREATE TABLE pagination_nonces (
  nonce      TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL
);
CREATE INDEX pagination_nonces_expires_at ON pagination_nonces (expires_at);
