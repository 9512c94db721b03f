import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { Db } from '../db/schema.ts';
import { inTransaction, isUniqueViolation } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { RecordAccountChange } from './account-audit.ts';
import { consumeChallenge, storeChallenge } from './passkey-challenges.ts';
import type { PasskeysTable } from './passkeys.table.ts';
import { clearAccountGuesses, countAccountGuess, countClientGuess } from './throttle.ts';
import { findUserById, type User } from './users.ts';

/**
 * Who the passkeys are for: the RP ID is the host name of `BASE_URL` (no port, no scheme) and the
 * only origin a browser may sign for is `BASE_URL`'s origin, so a passkey made here works nowhere
 * else, and one signed on another origin (or for another RP ID) is refused.
 */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
  /**
   * Whether browsers will make passkeys for it at all: a relying party is a domain name
   * (`localhost` included), never an IP address such as 127.0.0.1.
   */
  usable: boolean;
}

let webauthnLibrary: Promise<typeof import('@simplewebauthn/server')> | undefined;

/** The WebAuthn library is loaded with the first passkey ceremony, not at start-up (docs/decisions.md). */
function webauthn(): Promise<typeof import('@simplewebauthn/server')> {
  webauthnLibrary ??= import('@simplewebauthn/server');
  return webauthnLibrary;
}

export function relyingPartyFor(baseUrl: string): RelyingParty {
  const url = new URL(baseUrl);
  return {
    id: url.hostname,
    origin: url.origin,
    name: 'svc compliance workspaces',
    usable: isIP(url.hostname.replace(/^\[(.*)\]$/, '$1')) === 0,
  };
}

/**
 * EdDSA, ES256 and RS256 (COSE ids), the algorithms authenticators use. Named here rather than
 * left to the library's default, whose probe for post-quantum ML-DSA support prints Node's
 * "experimental feature" warning.
 */
const SUPPORTED_ALGORITHM_IDS = [-8, -7, -257];

/** How long the browser lets the person take; shorter than the challenge's life, so the post arrives in time. */
const CEREMONY_TIMEOUT_MS = 3 * MINUTE_MS;

export interface Passkey {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export interface PasskeyDeps {
  db: Db;
  clock: Clock;
  relyingParty: RelyingParty;
}

function toPasskey(row: PasskeysTable): Passkey {
  return {
    id: row.id,
    name: row.name,
    createdAt: new Date(Number(row.created_at)),
    lastUsedAt: row.last_used_at === null ? null : new Date(Number(row.last_used_at)),
  };
}

/** The WebAuthn user handle: the account id's bytes (an opaque id, not the address). */
function userHandleOf(userId: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(userId);
}

function transportsOf(row: PasskeysTable): string[] {
  const parsed: unknown = JSON.parse(row.transports);
  return Array.isArray(parsed) ? parsed.filter((item) => typeof item === 'string') : [];
}

export async function listPasskeys(db: Db, userId: string): Promise<Passkey[]> {
  const rows = await db
    .selectFrom('passkeys')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toPasskey);
}

const passkeyTarget = (passkey: { id: string; name: string }) => ({
  type: 'passkey',
  id: passkey.id,
  label: passkey.name,
});

/** Removes one of the account's passkeys; false when the account has none with that id. */
export async function removePasskey(
  db: Db,
  input: { user: User; passkeyId: string },
  recordChange: RecordAccountChange,
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const removed = await trx
      .deleteFrom('passkeys')
      .where('id', '=', input.passkeyId)
      .where('user_id', '=', input.user.id)
      .returning(['id', 'name'])
      .executeTakeFirst();
    if (!removed) return false;
    await recordChange(trx, {
      action: 'passkey.removed',
      account: input.user,
      target: passkeyTarget(removed),
    });
    return true;
  });
}

/**
 * What the browser needs to create a passkey for the signed-in account: a discoverable credential
 * (so it can sign in without typing an address), user verification preferred, no attestation.
 */
export async function startPasskeyRegistration(
  deps: PasskeyDeps,
  input: { user: User; binding: string },
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await deps.db
    .selectFrom('passkeys')
    .selectAll()
    .where('user_id', '=', input.user.id)
    .execute();
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: deps.relyingParty.name,
    rpID: deps.relyingParty.id,
    userID: userHandleOf(input.user.id),
    userName: input.user.email,
    userDisplayName: input.user.email,
    timeout: CEREMONY_TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((row) => ({ id: row.credential_id, transports: transportsOf(row) })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    supportedAlgorithmIDs: SUPPORTED_ALGORITHM_IDS,
  });
  await storeChallenge(deps.db, deps.clock, options.challenge, {
    purpose: 'register',
    binding: input.binding,
    userId: input.user.id,
  });
  return options;
}

/** What the browser needs to sign in with any passkey of this site it holds (no address asked). */
export async function startPasskeySignIn(
  deps: PasskeyDeps,
  input: { binding: string },
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: deps.relyingParty.id,
    timeout: CEREMONY_TIMEOUT_MS,
    userVerification: 'preferred',
  });
  await storeChallenge(deps.db, deps.clock, options.challenge, {
    purpose: 'sign_in',
    binding: input.binding,
  });
  return options;
}

/** Why a passkey was not accepted; each is an expected outcome, never an exception. */
export type PasskeyError =
  | { code: 'invalid_response' }
  | { code: 'challenge_invalid' }
  | {
      code: 'not_verified';
      /** The account the passkey belongs to, when it is known: for the audit log only, never for the visitor. */
      account?: { id: string; email: string };
    }
  | { code: 'already_registered' }
  | { code: 'unknown_passkey' }
  | { code: 'throttled'; retryAfterMs: number };

/** base64url of at most 1023 bytes (WebAuthn's limit on credential ids). */
const CREDENTIAL_ID_PATTERN = /^[A-Za-z0-9_-]{1,1364}$/;

interface ParsedResponse {
  credential: { id: string; response: Record<string, unknown> } & Record<string, unknown>;
  challenge: string;
}

/**
 * The browser's answer as posted (JSON text), with the challenge its client data names; undefined
 * for anything that is not shaped like a WebAuthn credential.
 */
function parseCredentialResponse(text: string): ParsedResponse | undefined {
  try {
    const credential: unknown = JSON.parse(text);
    if (typeof credential !== 'object' || credential === null) return undefined;
    const { id, type, response } = credential as Record<string, unknown>;
    if (typeof id !== 'string' || !CREDENTIAL_ID_PATTERN.test(id) || type !== 'public-key') return undefined;
    if (typeof response !== 'object' || response === null) return undefined;
    const clientDataJSON = (response as Record<string, unknown>).clientDataJSON;
    if (typeof clientDataJSON !== 'string') return undefined;
    const clientData: unknown = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8'));
    const challenge = (clientData as { challenge?: unknown } | null)?.challenge;
    if (typeof challenge !== 'string' || challenge === '') return undefined;
    return {
      credential: credential as ParsedResponse['credential'],
      challenge,
    };
  } catch {
    return undefined;
  }
}

/**
 * Checks the browser's new credential against the challenge issued to this browser for this
 * account (used up either way), the RP ID and the origin, and keeps it under `name`.
 */
export async function finishPasskeyRegistration(
  deps: PasskeyDeps,
  input: { user: User; binding: string; response: string; name: string },
  recordChange: RecordAccountChange,
): Promise<Result<Passkey, PasskeyError>> {
  const parsed = parseCredentialResponse(input.response);
  if (!parsed) return err({ code: 'invalid_response' });
  const live = await consumeChallenge(deps.db, deps.clock, parsed.challenge, {
    purpose: 'register',
    binding: input.binding,
    userId: input.user.id,
  });
  if (!live) return err({ code: 'challenge_invalid' });

  const library = await webauthn();
  let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verification = await library.verifyRegistrationResponse({
      response: parsed.credential as unknown as RegistrationResponseJSON,
      expectedChallenge: parsed.challenge,
      expectedOrigin: deps.relyingParty.origin,
      expectedRPID: deps.relyingParty.id,
      requireUserVerification: false,
      supportedAlgorithmIDs: SUPPORTED_ALGORITHM_IDS,
    });
  } catch {
    return err({ code: 'not_verified' });
  }
  if (!verification.verified) return err({ code: 'not_verified' });

  const { credential } = verification.registrationInfo;
  const now = deps.clock.now().getTime();
  const row: PasskeysTable = {
    id: newId('pkey', new Date(now)),
    user_id: input.user.id,
    credential_id: credential.id,
    public_key: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports: JSON.stringify(credential.transports ?? []),
    name: input.name,
    created_at: now,
    last_used_at: null,
  };
  try {
    await inTransaction(deps.db, async (trx) => {
      await trx.insertInto('passkeys').values(row).execute();
      await recordChange(trx, { action: 'passkey.added', account: input.user, target: passkeyTarget(row) });
    });
  } catch (error) {
    if (isUniqueViolation(error)) return err({ code: 'already_registered' });
    throw error;
  }
  return ok(toPasskey(row));
}

/**
 * Signs in with a passkey assertion. Every attempt counts against the client, and against the
 * account once the passkey names one, before the signature is checked (the password's throttle);
 * the challenge must have been issued to this browser and is used up either way; the signature
 * counter must grow (unless the authenticator keeps none), checked and stored in one conditional
 * update so a cloned authenticator or a replay racing the original loses.
 */
export async function signInWithPasskey(
  deps: PasskeyDeps,
  input: { binding: string; response: string; ip: string },
): Promise<Result<User, PasskeyError>> {
  const now = deps.clock.now().getTime();
  const client = await countClientGuess(deps.db, now, input.ip);
  if (!client.allowed) return err({ code: 'throttled', retryAfterMs: client.retryAfterMs });
  const parsed = parseCredentialResponse(input.response);
  if (!parsed) return err({ code: 'invalid_response' });
  const live = await consumeChallenge(deps.db, deps.clock, parsed.challenge, {
    purpose: 'sign_in',
    binding: input.binding,
  });
  if (!live) return err({ code: 'challenge_invalid' });

  const row = await deps.db
    .selectFrom('passkeys')
    .selectAll()
    .where('credential_id', '=', parsed.credential.id)
    .executeTakeFirst();
  const user = row ? await findUserById(deps.db, row.user_id) : undefined;
  if (!row || !user) return err({ code: 'unknown_passkey' });
  const account = await countAccountGuess(deps.db, now, user.email);
  if (!account.allowed) return err({ code: 'throttled', retryAfterMs: account.retryAfterMs });

  // Browsers name the account the passkey belongs to; it must be the one the passkey was made for.
  const userHandle = parsed.credential.response.userHandle ?? undefined;
  if (userHandle !== undefined && userHandle !== Buffer.from(userHandleOf(user.id)).toString('base64url')) {
    return err({ code: 'not_verified', account: user });
  }

  const storedCounter = Number(row.counter);
  let newCounter: number;
  const library = await webauthn();
  try {
    const verification = await library.verifyAuthenticationResponse({
      response: parsed.credential as unknown as AuthenticationResponseJSON,
      expectedChallenge: parsed.challenge,
      expectedOrigin: deps.relyingParty.origin,
      expectedRPID: deps.relyingParty.id,
      credential: {
        id: row.credential_id,
        publicKey: new Uint8Array(Buffer.from(row.public_key, 'base64url')),
        counter: storedCounter,
        transports: transportsOf(row),
      },
      requireUserVerification: false,
    });
    if (!verification.verified) return err({ code: 'not_verified', account: user });
    newCounter = verification.authenticationInfo.newCounter;
  } catch {
    return err({ code: 'not_verified', account: user });
  }

  const updated = await deps.db
    .updateTable('passkeys')
    .set({ counter: newCounter, last_used_at: now })
    .where('id', '=', row.id)
    .where('counter', '=', storedCounter)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) return err({ code: 'not_verified', account: user });
  await clearAccountGuesses(deps.db, user.email);
  return ok(user);
}
