import { describePlanLimit, type PlanLimitReached, upgradeUrl } from '../catalog/index.ts';

/**
 * A plan limit as a form error: the REST API's words and status (403), under the same stable
 * code, naming the workspace's Billing page.
 */
export function planLimitRefusal(
  baseUrl: string,
  workspaceId: string,
  refusal: PlanLimitReached,
): { status: 403; code: 'plan_limit_reached'; message: string } {
  return {
    status: 403,
    code: refusal.code,
    message: describePlanLimit(refusal, upgradeUrl(baseUrl, workspaceId)),
  };
}
