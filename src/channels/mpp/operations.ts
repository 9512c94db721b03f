import { type CatalogItem, SELLABLE_ITEMS } from '../../catalog/index.ts';

/** Where the app mounts the channel; the OpenAPI document needs the full paths. */
export const MPP_PREFIX = '/api/mpp';

/** One paid operation per sellable item: `POST /plans/{item id}`. */
export interface MppOperation {
  item: CatalogItem;
  /** Relative to MPP_PREFIX. */
  path: string;
  /** `svc-starter-monthly` -> `buyStarterMonthly`. */
  operationId: string;
}

export const MPP_OPERATIONS: readonly MppOperation[] = SELLABLE_ITEMS.map((item) => ({
  item,
  path: `/plans/${item.id}`,
  operationId: `buy${item.id
    .split('-')
    .slice(1)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('')}`,
}));
