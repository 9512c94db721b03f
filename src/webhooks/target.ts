import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { err, ok, type Result } from '../shared/result.ts';
import { ADDRESS_CLASS_NAMES, classifyAddress } from './addresses.ts';

/** Every address a host name resolves to. Injectable so tests can point a name anywhere. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

export interface TargetPolicy {
  /** Development only: loopback targets (127.0.0.0/8, ::1, localhost) are accepted, over http too. */
  allowLoopback: boolean;
  resolveHost: ResolveHost;
}

/** A URL whose every address passed the policy; requests connect to these addresses and nowhere else. */
export interface Target {
  url: URL;
  addresses: string[];
}

export type TargetRefusalCode =
  | 'invalid_url'
  | 'url_not_https'
  | 'url_has_credentials'
  | 'target_unresolvable'
  | 'target_not_public';

export interface TargetRefusal {
  code: TargetRefusalCode;
  message: string;
}

const DNS_TIMEOUT_MS = 5_000;

/** The operating system's resolver (what a plain `http.request` would use), bounded in time. */
export function systemResolver(timeoutMs = DNS_TIMEOUT_MS): ResolveHost {
  return async (hostname) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no DNS answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const answers = await Promise.race([lookup(hostname, { all: true, order: 'verbatim' }), timeout]);
      return answers.map((answer) => answer.address);
    } finally {
      clearTimeout(timer);
    }
  };
}

const refuse = (code: TargetRefusalCode, message: string) => err<TargetRefusal>({ code, message });

const HTTPS_ONLY =
  'must use https (http is accepted only for loopback targets, with WEBHOOK_ALLOW_LOOPBACK in development)';

/**
 * Checks a webhook URL: https, no credentials, and a host whose every address is public (or
 * loopback, when the development setting allows it). Run at subscribe time and again before
 * every attempt, because what a name resolves to can change (DNS rebinding).
 */
export async function checkTarget(raw: string, policy: TargetPolicy): Promise<Result<Target, TargetRefusal>> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('invalid_url', 'is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return refuse('url_not_https', HTTPS_ONLY);
  if (url.protocol === 'http:' && !policy.allowLoopback) return refuse('url_not_https', HTTPS_ONLY);
  if (url.username !== '' || url.password !== '') {
    return refuse(
      'url_has_credentials',
      'must not carry a user name or password; the signature authenticates us',
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await policy.resolveHost(host);
    } catch (error) {
      return refuse('target_unresolvable', `host ${host} does not resolve (${(error as Error).message})`);
    }
    if (addresses.length === 0) return refuse('target_unresolvable', `host ${host} has no address`);
  }
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind === 'public' || (kind === 'loopback' && policy.allowLoopback)) continue;
    const subject = address === host ? address : `${host} resolves to ${address}, which`;
    return refuse(
      'target_not_public',
      `${subject} is ${ADDRESS_CLASS_NAMES[kind]}; webhooks are only sent to public addresses`,
    );
  }
  if (url.protocol === 'http:' && !addresses.every((address) => classifyAddress(address) === 'loopback')) {
    return refuse('url_not_https', HTTPS_ONLY);
  }
  return ok({ url, addresses });
}
