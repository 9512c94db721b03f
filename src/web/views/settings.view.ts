import type { MemberRole, Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';

/** The Settings page: the workspace's name, which owners rename. */
export interface SettingsView {
  workspace: Workspace;
  role: MemberRole;
  canManage: boolean;
  canRename: boolean;
  nameMaxLength: number;
  notice: string | undefined;
  errors: FieldError[];
  /** The name in the form: as sent when refused, else the workspace's. */
  name: string;
}

declare module '../render.ts' {
  interface PageViews {
    settings: SettingsView;
  }
}
