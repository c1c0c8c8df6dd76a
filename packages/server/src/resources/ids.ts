import { randomInt, randomUUID } from 'node:crypto';

const FIRST = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const REST = `${FIRST}_-`;

/** 8 characters, the first alphanumeric (ids of server-created buckets, collections, groups). */
export function generateName(): string {
  let id = FIRST[randomInt(FIRST.length)] as string;
  for (let i = 1; i < 8; i++) id += REST[randomInt(REST.length)];
  return id;
}

/** Lowercase UUID4 (server-created records). */
export function generateUuid(): string {
  return randomUUID();
}
