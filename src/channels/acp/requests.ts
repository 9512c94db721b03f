import type { preValidationHookHandler } from 'fastify';
import type { SessionBuyer } from '../../checkout/index.ts';
import type { BuyerInput } from './schemas.ts';

export function toSessionBuyer(buyer: BuyerInput): SessionBuyer {
  return {
    email: buyer.email,
    ...(buyer.first_name ? { firstName: buyer.first_name } : {}),
    ...(buyer.last_name ? { lastName: buyer.last_name } : {}),
    ...(buyer.full_name ? { fullName: buyer.full_name } : {}),
    ...(buyer.phone_number ? { phoneNumber: buyer.phone_number } : {}),
    ...(buyer.company ? { companyName: buyer.company.name } : {}),
  };
}

/** Agents built against 2025-09-29 send the line items as `items`; read them as `line_items`. */
export const acceptLegacyItemsKey: preValidationHookHandler = (request, _reply, done) => {
  const body = request.body;
  if (isRecord(body) && body.line_items === undefined && body.items !== undefined) {
    const { items, ...rest } = body;
    request.body = { ...rest, line_items: items };
  }
  done();
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
