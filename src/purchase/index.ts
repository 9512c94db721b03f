export {
  crashOnceAt,
  type FailpointName,
  type Failpoints,
  noFailpoints,
  SimulatedCrash,
} from './failpoints.ts';
export {
  type Buyer,
  type Order,
  type PurchaseDeps,
  type PurchaseLogger,
  type PurchaseOutcome,
  type PurchaseRequest,
  purchase,
  resumePurchase,
} from './pipeline.ts';
export { recoverUnfinishedPurchases } from './recovery.ts';
