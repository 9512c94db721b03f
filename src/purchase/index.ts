export { type PaidAppOrder, recordPaidAppOrder } from './app-orders.ts';
export { crashOnceAt, type FailpointName, type Failpoints, SimulatedCrash } from './failpoints.ts';
export { createOrderLinks, type OrderLinks } from './order-links.ts';
export { findOrderByPageLink, loadOrderLinkSecret } from './order-page.ts';
export { listOrders } from './orders.ts';
export {
  attemptState,
  attemptStatus,
  type Buyer,
  getOrder,
  type Order,
  type PurchaseDeps,
  type PurchaseLogger,
  type PurchaseOutcome,
  type PurchaseRequest,
  purchase,
  recordPurchase,
  resumePurchase,
} from './pipeline.ts';
export {
  advanceFollowedOrders,
  followOrder,
  type OrderEvent,
  type OrderFollower,
  type OrderProgress,
  type OrderState,
  orderProgress,
  progressOf,
} from './progress.ts';
export { recoverUnfinishedPurchases } from './recovery.ts';
export { type OrderNotifier, orderFollowingWiring, purchaseWiring } from './wiring.ts';
