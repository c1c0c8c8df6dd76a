/** History settings (history/): what is recorded, how long it is kept, how it is paged and moved. */
import { Type } from '@sinclair/typebox';
import { List, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const HISTORY_SETTINGS = {
  history_enabled: Type.Boolean({
    default: false,
    description: 'Keep a change log per bucket at `/buckets/<bid>/history` (capability `history`).',
  }),
  history_exclude_resources: List({
    default: [],
    description: 'URIs of buckets, collections or objects whose changes are not recorded in history.',
  }),
  history_exclude_user_ids: List({ default: [], description: 'User ids whose changes are not recorded in history.' }),
  history_auto_trim_max_count: Nullable(Type.Integer({ minimum: 1 }), {
    default: null,
    description:
      'Keep only the newest N history entries per bucket and kind of object (bucket, collection, group, ' +
      'record); unset: keep everything. Shown in the `history` capability.',
  }),
  history_auto_trim_user_ids: List({
    default: [],
    description:
      'With `history_auto_trim_max_count`: trim only these users’ entries, N per user and kind of object ' +
      '(empty: every entry).',
  }),
  history_paginate_by: Type.Integer({
    default: 1000,
    minimum: 1,
    description:
      'Most entries per page of a history listing (`GET`/`DELETE /buckets/<bid>/history`), whatever `_limit` ' +
      'asks; the rest follows with `Next-Page`.',
  }),
  history_drain_batch_size: Type.Integer({
    default: 500,
    minimum: 1,
    maximum: 100000,
    description: 'Pending history entries moved into the history per transaction after commit.',
  }),
  history_drain_delay_ms: Type.Integer({
    default: 200,
    minimum: 0,
    maximum: 60000,
    description:
      'How long after a commit its history entries wait to be moved together with the next commits’ (readers ' +
      'of the history never wait for it).',
  }),
  history_drain_interval_seconds: Type.Number({
    default: 30,
    minimum: 0.1,
    description: 'How often a process looks for pending history entries left by another (stopped) process.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type HistorySettings = SettingValues<typeof HISTORY_SETTINGS>;
