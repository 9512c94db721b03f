/**
 * JSON Schema patterns for strings a request carries into storage or on to another system. Both
 * validators here compile patterns with the `u` flag, where `[\ud800-\udfff]` matches only an
 * unpaired surrogate, so characters outside the Basic Multilingual Plane pass.
 */

/**
 * Text that is stored as sent: no U+0000 (PostgreSQL text cannot hold it) and no unpaired
 * surrogate (it has no UTF-8 form and would be stored altered, as U+FFFD).
 */
export const STORABLE_TEXT = '^[^\\u0000\\ud800-\\udfff]*$';

const storable = new RegExp(STORABLE_TEXT, 'u');

/** The same rule for a string that reaches a query without passing a schema (a cursor's position). */
export const isStorableText = (value: string): boolean => storable.test(value);

/** A token issued by another system (a shared payment token): printable ASCII, no spaces. */
export const TOKEN_TEXT = '^[\\x21-\\x7e]+$';
