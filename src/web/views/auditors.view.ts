import type { Auditor, AuditorInvitation, Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';

/** The Auditors page: external auditors and their open invitations; owners invite and end access. */
export interface AuditorsView {
  workspace: Workspace;
  canManage: boolean;
  /** Only owners invite auditors and end their access; admins see the list. */
  isOwner: boolean;
  auditors: Auditor[];
  invitations: AuditorInvitation[];
  notice: string | undefined;
  formId: string;
  errors: FieldError[];
  form: { email: string; access_until: string };
  /** The date field's bounds, `YYYY-MM-DD`. */
  minDate: string;
  maxDate: string;
}

declare module '../render.ts' {
  interface PageViews {
    auditors: AuditorsView;
  }
}
