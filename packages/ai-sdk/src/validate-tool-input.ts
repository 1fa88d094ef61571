/** Validates a call's arguments against an AI SDK tool's own input schema. */
import { asSchema, type Tool } from "ai";

export type ToolInputValidation =
  | { readonly success: true; readonly value: unknown }
  | { readonly success: false; readonly message: string };

function describeError(error: unknown): string {
  // zod reports `issues` on the error itself; other validators may wrap it as the cause.
  const issuesOf = (value: unknown): unknown => (value as { issues?: unknown } | null | undefined)?.issues;
  const issues = issuesOf(error) ?? issuesOf((error as { cause?: unknown } | null)?.cause);
  if (Array.isArray(issues) && issues.length > 0) {
    return issues
      .map((issue: { path?: unknown[]; message?: string }) => {
        const path = Array.isArray(issue.path) && issue.path.length > 0 ? issue.path.join(".") : "(arguments)";
        return `${path}: ${issue.message ?? "invalid"}`;
      })
      .join("; ");
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * Parses the raw JSON arguments and validates them with the tool's input schema (zod, standard
 * schema or `jsonSchema(..., { validate })`). A JSON schema without a validator accepts any JSON.
 */
export async function validateToolInput(tool: Tool, name: string, rawArguments: string): Promise<ToolInputValidation> {
  let value: unknown;
  try {
    value = JSON.parse(rawArguments);
  } catch {
    return { success: false, message: `the arguments of "${name}" are not valid JSON: ${rawArguments.slice(0, 200)}` };
  }
  const schema = asSchema(tool.inputSchema);
  if (!schema.validate) return { success: true, value };
  const result = await schema.validate(value);
  if (result.success) return { success: true, value: result.value };
  return { success: false, message: `invalid arguments for "${name}": ${describeError(result.error)}` };
}
