/** One running service process; a row whose heartbeat is older than the configured bound is gone. */
export interface ServiceInstancesTable {
  id: string;
  started_at: number;
  /** Wall-clock milliseconds of the last heartbeat. */
  heartbeat_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    service_instances: ServiceInstancesTable;
  }
}
