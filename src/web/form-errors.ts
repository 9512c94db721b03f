import type { TSchema } from 'typebox';
import { compiledSchema, validationIssues } from '../http/validation.ts';

/** One problem with a form, shown in the error summary; `field` links to the field's id. */
export type FieldError = { field?: string; message: string };

/**
 * The problems of a form's values against the schema the REST API takes for the same change, one
 * per field, worded by `words` (a field without words gets a general one): the app and the API
 * refuse the same input.
 */
export function schemaErrors(
  schema: TSchema,
  body: unknown,
  words: Record<string, FieldError>,
): FieldError[] {
  const issues = validationIssues(compiledSchema(schema).Errors(body));
  const fields = new Set(issues.map((issue) => issue.path[0] ?? ''));
  return [...fields].map((name) => words[name] ?? { message: 'Check the form and try again.' });
}
