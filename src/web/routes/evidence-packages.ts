import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type EvidencePackage,
  getPackage,
  listPackages,
  MAX_RANGE_DAYS,
  openPackage,
  PACKAGE_TTL_MS,
  type PackageDeps,
  type PackageError,
  type PackageLinks,
  packageFileName,
  packageLabel,
  recordDownload,
  requestPackage,
  toEvidencePackage,
} from '../../evidence-package/index.ts';
import { attachment, DOWNLOAD_HEADERS } from '../../http/download.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { userSourceOf } from '../audit.ts';
import type { FieldError } from '../form-errors.ts';
import { sendNotFound, sendPage, sendView } from '../render.ts';
import { sizeLabel } from '../views/evidence.view.ts';
import { packageView } from '../views/evidence-packages.view.ts';
import { accessOf, pageBaseOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

/** How often the page of a package being built reloads itself. */
const REFRESH_SECONDS = 2;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

const PackageParams = Type.Object({
  workspaceId: Type.String({ maxLength: 100 }),
  packageId: Type.String({ maxLength: 100 }),
});
const RequestForm = Type.Object({
  from: Type.Optional(Type.String({ maxLength: 20 })),
  to: Type.Optional(Type.String({ maxLength: 20 })),
});
type RequestForm = { from?: string; to?: string };

/** An auditor may open these pages, request a package and download it (issue 26). */
const AUDITOR = { auditorMayRead: true } as const;

function refusalOf(error: PackageError): FieldError {
  switch (error.code) {
    case 'invalid_range':
      return { field: 'from', message: 'The first day must not be after the last day (or after today).' };
    case 'range_too_long':
      return {
        field: 'from',
        message: `A package covers at most ${error.maxDays} days. Leave both days empty for the whole workspace.`,
      };
    case 'packages_in_progress':
      return {
        field: 'from',
        message: `${error.limit} packages are being built already; request another once one is ready.`,
      };
  }
}

function isCalendarDate(value: string): boolean {
  return DATE.test(value) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value);
}

export function evidencePackageRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const packageDeps: PackageDeps = { db: deps.db, clock: deps.clock, store: deps.evidence.store };
  const linksFor = (workspaceId: string): PackageLinks => ({
    status: (id) => `/w/${workspaceId}/evidence-packages/${id}`,
    file: (id) => `/w/${workspaceId}/evidence-packages/${id}/download`,
  });
  const viewOf = (pkg: EvidencePackage, label: string) => packageView(pkg, label, sizeLabel);

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    extra: { errors?: FieldError[]; form?: RequestForm } = {},
    status = 200,
  ) {
    const base = pageBaseOf(request);
    const links = linksFor(base.workspace.id);
    const rows = await listPackages(deps.db, base.workspace.id);
    return sendView(
      request,
      reply,
      'evidence-packages',
      {
        title: `Evidence packages · ${base.workspace.name}`,
        ...base,
        packages: rows.map((row) => viewOf(toEvidencePackage(row, links), packageLabel(row))),
        errors: extra.errors ?? [],
        form: { from: extra.form?.from ?? '', to: extra.form?.to ?? '' },
        maxRangeDays: MAX_RANGE_DAYS,
        ttlDays: PACKAGE_TTL_MS / DAY_MS,
      },
      status,
    );
  }

  app.get('/evidence-packages', { config: AUDITOR }, (request, reply) => listPage(request, reply));

  app.post<{ Body: RequestForm }>(
    '/evidence-packages',
    { config: AUDITOR, schema: { body: RequestForm } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspaceId = access.membership.workspace.id;
      const form = { from: request.body.from?.trim() ?? '', to: request.body.to?.trim() ?? '' };
      const errors: FieldError[] = [];
      for (const name of ['from', 'to'] as const) {
        if (form[name] !== '' && !isCalendarDate(form[name])) {
          errors.push({ field: name, message: 'Enter a date as YYYY-MM-DD, or leave it empty.' });
        }
      }
      if (errors.length > 0) return listPage(request, reply, { errors, form }, 400);
      const result = await requestPackage(
        packageDeps,
        workspaceId,
        { ...(form.from ? { from: form.from } : {}), ...(form.to ? { to: form.to } : {}) },
        userSourceOf(request, access.user),
      );
      if (!result.ok) {
        const status = result.error.code === 'packages_in_progress' ? 409 : 400;
        return listPage(request, reply, { errors: [refusalOf(result.error)], form }, status);
      }
      return reply.redirect(`/w/${workspaceId}/evidence-packages/${result.value.row.id}`, 303);
    },
  );

  app.get<{ Params: { workspaceId: string; packageId: string } }>(
    '/evidence-packages/:packageId',
    { config: AUDITOR, schema: { params: PackageParams } },
    async (request, reply) => {
      const base = pageBaseOf(request);
      const row = await getPackage(deps.db, base.workspace.id, request.params.packageId);
      if (!row) return sendNotFound(request, reply);
      const pkg = toEvidencePackage(row, linksFor(base.workspace.id));
      const working = pkg.status === 'queued' || pkg.status === 'building';
      return sendView(request, reply, 'evidence-package', {
        title: `Evidence package · ${base.workspace.name}`,
        ...base,
        pkg: viewOf(pkg, packageLabel(row)),
        refreshSeconds: working ? REFRESH_SECONDS : null,
      });
    },
  );

  app.get<{ Params: { workspaceId: string; packageId: string } }>(
    '/evidence-packages/:packageId/download',
    { config: AUDITOR, schema: { params: PackageParams } },
    async (request, reply) => {
      const access = accessOf(request);
      const opened = await openPackage(packageDeps, access.membership.workspace.id, request.params.packageId);
      if (!opened) return sendNotFound(request, reply);
      if (opened.status !== 'open') {
        return sendPage(
          request,
          reply,
          'error',
          {
            title: 'Package not available',
            heading:
              opened.status === 'not_ready'
                ? 'This package is still being built'
                : 'This package is no longer available',
            message:
              opened.status === 'not_ready'
                ? 'Its page shows the progress; the download button appears when it is ready.'
                : 'Packages are kept for a few days after they are built. Request a new one.',
            errorCode: opened.status === 'not_ready' ? 'package_not_ready' : 'package_expired',
          },
          opened.status === 'not_ready' ? 409 : 410,
        );
      }
      await recordDownload(deps.db, deps.clock, opened.row, userSourceOf(request, access.user));
      return reply
        .headers(DOWNLOAD_HEADERS)
        .header('content-type', 'application/zip')
        .header('content-length', Number(opened.row.size))
        .header('content-disposition', attachment(packageFileName(opened.row)))
        .send(opened.stream);
    },
  );
}
