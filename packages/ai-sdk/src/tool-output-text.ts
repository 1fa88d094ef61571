/** The text an AI SDK tool result output (`ToolResultOutput`) stands for, as a model or a UI reads it. */

type Part = { readonly type: string; readonly [key: string]: unknown };

/** The text a tool result output stands for. */
export function toolOutputText(output: unknown): string {
  if (typeof output !== "object" || output === null) return "";
  const result = output as { type?: unknown; value?: unknown; reason?: unknown };
  switch (result.type) {
    case "text":
    case "error-text":
      return typeof result.value === "string" ? result.value : "";
    case "json":
    case "error-json":
      return JSON.stringify(result.value ?? null);
    case "execution-denied":
      return typeof result.reason === "string" ? result.reason : "The tool call was denied.";
    case "content":
      return Array.isArray(result.value)
        ? (result.value as Part[])
            .filter((part) => part.type === "text" && typeof part.text === "string")
            .map((part) => part.text as string)
            .join("")
        : "";
    default:
      return "";
  }
}
