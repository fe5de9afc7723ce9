/** Reading files: `Range` parsing (RFC 9110) and entity-tag matching. */
export * from './range.ts';
