export {
  crashOnceAt,
  type FailpointName,
  type Failpoints,
  noFailpoints,
  SimulatedCrash,
} from './failpoints.ts';
export { listOrders } from './orders.ts';
export {
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
  type SettledOutcome,
  settledOutcome,
} from './pipeline.ts';
export { recoverUnfinishedPurchases } from './recovery.ts';
