export { OpenAIAgentsRunner, type OpenAIAgentsRunnerOptions } from "./openai-agents-runner.js";
export { openAIAgentsSession, type OpenAIAgentsSessionOptions } from "./openai-agents-session.js";
export { durableTool, durableToolInfo, type DurableToolInfo, type DurableToolOptions } from "./durable-tool.js";
export { RunStateMismatchError } from "./run-state-codec.js";
