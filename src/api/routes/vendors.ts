import {
  CreateVendorBody,
  createVendor,
  deleteVendor,
  getVendor,
  listVendors,
  UpdateVendorBody,
  updateVendor,
  Vendor,
  VendorsFilter,
} from '../../compliance/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, DeletedRecord, IdParams } from '../context.ts';
import { NoContent, responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Vendors'];

export function vendorRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Vendor, CreateVendorBody, UpdateVendorBody });
  catalog.events(Vendor, 'vendor.created', 'vendor.updated');
  catalog.events(DeletedRecord, 'vendor.deleted');
  app.get(
    '/vendors',
    {
      schema: {
        operationId: 'listVendors',
        summary: 'List vendors',
        description:
          'Oldest first. `q` searches the name and the website; filter by `status`, `risk_level`, ' +
          '`owner_id` or `review_due_before` (a next review date before that day: overdue reviews).',
        tags,
        querystring: listQuery(VendorsFilter),
        response: responses({ 200: pageOf(Vendor) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'vendors', request.query, (workspaceId, filter, page) =>
        listVendors(deps, workspaceId, filter, page),
      ),
  );

  app.post(
    '/vendors',
    {
      schema: {
        operationId: 'createVendor',
        summary: 'Create a vendor',
        description: 'Without them, `risk_level` is medium and `status` active.',
        tags,
        body: CreateVendorBody,
        response: responses({ 201: Vendor }, [404]),
      },
    },
    async (request, reply) => {
      const result = await createVendor(deps, workspaceOf(request), request.body, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'vendor');
      return reply.code(201).send(result.value);
    },
  );

  app.get(
    '/vendors/:id',
    {
      schema: {
        operationId: 'getVendor',
        summary: 'Get a vendor',
        tags,
        params: IdParams,
        response: responses({ 200: Vendor }, [404]),
      },
    },
    async (request, reply) =>
      (await getVendor(deps, workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'vendor'),
  );

  app.patch(
    '/vendors/:id',
    {
      schema: {
        operationId: 'updateVendor',
        summary: 'Change a vendor',
        tags,
        params: IdParams,
        body: UpdateVendorBody,
        response: responses({ 200: Vendor }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateVendor(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'vendor');
    },
  );

  app.delete(
    '/vendors/:id',
    {
      schema: {
        operationId: 'deleteVendor',
        summary: 'Delete a vendor',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [404]),
      },
    },
    async (request, reply) => {
      const result = await deleteVendor(
        deps,
        workspaceOf(request),
        request.params.id,
        auditSourceOf(request),
      );
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'vendor');
      return reply.code(204).send(null);
    },
  );
}
