import {
  type BareItem,
  type Dictionary,
  type InnerList,
  type Item,
  ParseError,
  parseDictionary,
  serializeBareItem,
} from 'structured-headers';

/**
 * The `UCP-Agent` request header: an RFC 9651 Dictionary such as
 * `profile="https://agent.example/.well-known/ucp"; version="2026-08-25"`. Only what the version
 * check needs is read; the profile itself is never fetched.
 *
 * structured-headers 2.1.0 reads a Date item (`@…`) to the end of the field, so a Date anywhere
 * but last is refused as malformed (no UCP agent is known to send one).
 */

export type AgentVersion = { kind: 'none' } | { kind: 'requested'; version: string } | { kind: 'malformed' };

/**
 * The protocol version an agent asks for: the `version` parameter of its `profile` member (what
 * the reference implementations send) or a `version` member of its own.
 */
export function requestedVersion(header: string | undefined): AgentVersion {
  if (header === undefined || header.trim() === '') return { kind: 'none' };
  const members = dictionaryOf(header);
  if (!members) return { kind: 'malformed' };
  const version = members.get('profile')?.[1].get('version') ?? itemOf(members.get('version'));
  return version === undefined ? { kind: 'none' } : { kind: 'requested', version: textOf(version) };
}

function dictionaryOf(header: string): Dictionary | undefined {
  try {
    return parseDictionary(header);
  } catch (error) {
    if (error instanceof ParseError) return undefined;
    throw error;
  }
}

/** An inner list carries no single value. */
function itemOf(member: Item | InnerList | undefined): BareItem | undefined {
  if (member === undefined || Array.isArray(member[0])) return undefined;
  return member[0];
}

/** A version that is not a String is kept as written, so it is refused rather than ignored. */
function textOf(item: BareItem): string {
  return typeof item === 'string' ? item : serializeBareItem(item);
}

/** The profile URL the `UCP-Agent` header names (its `profile` member), if it names one. */
export function agentProfileUrl(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const profile = dictionaryOf(header)?.get('profile');
  const value = profile && !Array.isArray(profile[0]) ? profile[0] : undefined;
  return typeof value === 'string' ? value : undefined;
}
