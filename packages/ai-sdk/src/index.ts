export { AiSdkRunner, type AiSdkRunnerOptions } from "./ai-sdk-runner.js";
export { aiSdkSession, type AiSdkSessionOptions } from "./ai-sdk-session.js";
export { displayMessage } from "./display-projection.js";
export { outcomeMessage } from "./outcome-message.js";
export { toolOutputText } from "./tool-output-text.js";
