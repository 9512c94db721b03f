import type { CardDetails } from './types.ts';

/** What confirming a PaymentIntent with this test payment method does (docs.stripe.com/testing). */
export type ChargeOutcome =
  | { readonly kind: 'approve' }
  | { readonly kind: 'authenticate' }
  | {
      readonly kind: 'decline';
      readonly code: string;
      readonly declineCode?: string | undefined;
      readonly message: string;
    };

export interface TestPaymentMethod {
  readonly card: Omit<CardDetails, 'exp_month' | 'exp_year'>;
  readonly outcome: ChargeOutcome;
}

const APPROVE: ChargeOutcome = { kind: 'approve' };
const AUTHENTICATE: ChargeOutcome = { kind: 'authenticate' };
const GENERIC_DECLINE_MESSAGE = 'Your card was declined.';

function cardDeclined(declineCode: string, message = GENERIC_DECLINE_MESSAGE): ChargeOutcome {
  return { kind: 'decline', code: 'card_declined', declineCode, message };
}

function failedWith(code: string, message: string): ChargeOutcome {
  return { kind: 'decline', code, message };
}

function card(brand: string, last4: string, outcome: ChargeOutcome, country = 'US'): TestPaymentMethod {
  return { card: { brand, display_brand: brand, country, funding: 'credit', last4 }, outcome };
}

const insufficientFunds = card(
  'visa',
  '9995',
  cardDeclined('insufficient_funds', 'Your card has insufficient funds.'),
);

const TEST_PAYMENT_METHODS: ReadonlyMap<string, TestPaymentMethod> = new Map([
  ['pm_card_visa', card('visa', '4242', APPROVE)],
  ['pm_card_mastercard', card('mastercard', '4444', APPROVE)],
  ['pm_card_amex', card('amex', '8431', APPROVE)],
  ['pm_card_discover', card('discover', '1117', APPROVE)],
  ['pm_card_visa_chargeDeclined', card('visa', '0002', cardDeclined('generic_decline'))],
  ['pm_card_visa_chargeDeclinedInsufficientFunds', insufficientFunds],
  ['pm_card_chargeDeclinedInsufficientFunds', insufficientFunds],
  ['pm_card_visa_chargeDeclinedLostCard', card('visa', '9987', cardDeclined('lost_card'))],
  ['pm_card_visa_chargeDeclinedStolenCard', card('visa', '9979', cardDeclined('stolen_card'))],
  [
    'pm_card_visa_chargeDeclinedVelocityLimitExceeded',
    card('visa', '6975', cardDeclined('card_velocity_exceeded')),
  ],
  [
    'pm_card_chargeDeclinedExpiredCard',
    card('visa', '0069', failedWith('expired_card', 'Your card has expired.')),
  ],
  [
    'pm_card_chargeDeclinedIncorrectCvc',
    card('visa', '0127', failedWith('incorrect_cvc', "Your card's security code is incorrect.")),
  ],
  [
    'pm_card_chargeDeclinedProcessingError',
    card(
      'visa',
      '0119',
      failedWith(
        'processing_error',
        'An error occurred while processing your card. Try again in a little bit.',
      ),
    ),
  ],
  ['pm_card_authenticationRequired', card('visa', '3184', AUTHENTICATE, 'DE')],
  ['pm_card_threeDSecure2Required', card('visa', '0027', AUTHENTICATE)],
]);

export function findTestPaymentMethod(id: string): TestPaymentMethod | undefined {
  return TEST_PAYMENT_METHODS.get(id);
}

/** Card numbers a person can type on the hosted checkout page, and the test payment method each stands for. */
const TEST_CARD_NUMBERS: ReadonlyMap<string, string> = new Map([
  ['4242424242424242', 'pm_card_visa'],
  ['4000000000000002', 'pm_card_visa_chargeDeclined'],
  ['4000000000009995', 'pm_card_visa_chargeDeclinedInsufficientFunds'],
  ['4000002760003184', 'pm_card_authenticationRequired'],
]);

/** The test payment method id for a typed card number (spaces and dashes ignored). */
export function testPaymentMethodForCardNumber(cardNumber: string): string | undefined {
  return TEST_CARD_NUMBERS.get(cardNumber.replace(/[\s-]/g, ''));
}
