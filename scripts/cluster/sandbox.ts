/** What a buyer's agent and a test operator ask of the cluster's PSP sandbox over HTTP. */
import { FAULTS_PATH } from '../../src/psp/sandbox/faults.ts';

async function sandboxPost(
  sandboxUrl: string,
  secretKey: string,
  path: string,
  params: Record<string, string>,
  method = 'POST',
): Promise<unknown> {
  const response = await fetch(`${sandboxUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${secretKey}`, 'content-type': 'application/x-www-form-urlencoded' },
    ...(method === 'POST' ? { body: new URLSearchParams(params) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`PSP sandbox ${method} ${path} answered ${response.status}`);
  return body;
}

/** A shared payment token good for `maxAmount` cents (USD), as a buyer's wallet would grant one. */
export async function mintToken(
  sandboxUrl: string,
  secretKey: string,
  maxAmount = 1_000_000,
): Promise<string> {
  const token = (await sandboxPost(sandboxUrl, secretKey, '/v1/test_helpers/shared_payment/granted_tokens', {
    payment_method: 'pm_card_visa',
    'usage_limits[currency]': 'usd',
    'usage_limits[max_amount]': String(maxAmount),
  })) as { id: string };
  return token.id;
}

/** Sets faults (src/psp/sandbox/faults.ts): fail_next, fail_status, drop_responses, latency_ms. */
export async function setFaults(sandboxUrl: string, secretKey: string, faults: Record<string, number>) {
  const params = Object.fromEntries(Object.entries(faults).map(([name, value]) => [name, String(value)]));
  await sandboxPost(sandboxUrl, secretKey, FAULTS_PATH, params);
}

export async function clearFaults(sandboxUrl: string, secretKey: string) {
  await sandboxPost(sandboxUrl, secretKey, FAULTS_PATH, {}, 'DELETE');
}
