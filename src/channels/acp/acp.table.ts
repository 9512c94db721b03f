/**
 * An ACP order's checkout session, kept as given: ACP's order webhooks name it
 * (`checkout_session_id`). Recorded only while an order webhook is configured.
 */
export interface AcpOrdersTable {
  order_id: string;
  checkout_session_id: string;
  created_at: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    acp_orders: AcpOrdersTable;
  }
}
