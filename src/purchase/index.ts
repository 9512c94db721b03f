export { type PaidAppOrder, recordPaidAppOrder } from './app-orders.ts';
export {
  crashOnceAt,
  type FailpointName,
  type Failpoints,
  noFailpoints,
  SimulatedCrash,
} from './failpoints.ts';
export { createOrderLinks, findOrderByPageLink, loadOrderLinkSecret, type OrderLinks } from './order-page.ts';
export { listOrders } from './orders.ts';
export {
  type AttemptState,
  attemptState,
  attemptStatus,
  type Buyer,
  continuePurchase,
  getOrder,
  IDEMPOTENCY_WINDOW_MS,
  type Order,
  type PurchaseDeps,
  type PurchaseLogger,
  type PurchaseOutcome,
  type PurchaseRequest,
  purchase,
  type RecordedAttempt,
  recordPurchase,
  resumePurchase,
  type SettledOutcome,
} from './pipeline.ts';
export { recoverUnfinishedPurchases } from './recovery.ts';
