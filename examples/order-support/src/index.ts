export {
  OrderDesk,
  OrderDeskOpenError,
  sampleOrders,
  type CancelCall,
  type CancellationRecord,
  type Order,
  type OrderItem,
  type OrderStatus,
} from "./order-desk.js";
export {
  chooseOrderSupportStore,
  defaultStoreFile,
  defaultStoreFolder,
  deskFileFor,
  openOrderSupportStore,
  orderSupportStoreKinds,
  storeSideFile,
  StoreChoiceError,
  type OpenedStore,
  type OrderSupportProgram,
  type OrderSupportStoreKind,
  type StoreChoice,
} from "./order-support-store.js";
export { DemoSessions, DemoSessionsFileError, type DemoSessionRecord } from "./demo-sessions.js";
export { createOrderSupportAgent } from "./order-support-agent.js";
export { orderSupportInstructions } from "./order-support-instructions.js";
export {
  chunkText,
  decideDemoTurn,
  demoConversation,
  parseOrderId,
  type DemoConversation,
  type DemoDecision,
  type DemoMessage,
  type DemoToolResult,
} from "./demo-decision.js";
export {
  cancelDelayFromEnv,
  cancelOrder,
  lookUpDelayFromEnv,
  lookUpOrder,
  type OrderSupportToolOptions,
} from "./slow-look-up.js";
export { reconcileCancellation } from "./reconcile-cancellation.js";
export { OrderSupportDemoModel, decideDemoResponse, type OrderSupportDemoModelOptions } from "./demo-model.js";
export { OrderSupportAiSdkDemoModel, type OrderSupportAiSdkDemoModelOptions } from "./ai-sdk-demo-model.js";
export { createOrderSupportAiSdkTools, type OrderSupportAiSdkTools } from "./ai-sdk-order-support-tools.js";
export { createAiSdkOrderSupportSession } from "./ai-sdk-order-support-session.js";
export { aiSdkOrderSupportModelFromEnv, type AiSdkOrderSupportModelChoice } from "./ai-sdk-order-support-model.js";
export {
  orderSupportFrameworks,
  parseOrderSupportFramework,
  type OrderSupportFramework,
} from "./order-support-framework.js";
export { orderSupportSetupFromEnv, type OrderSupportDemoSpeed, type OrderSupportSetup } from "./order-support-setup.js";
export { orderSupportModelFromEnv, type OrderSupportModelChoice } from "./order-support-model.js";
export {
  createOrderSupportSession,
  orderSupportAgentName,
  orderSupportPolicies,
  orderSupportSessionPolicies,
} from "./order-support-session.js";
export {
  startOrderSupportRuntime,
  type OrderSupportRuntime,
  type OrderSupportRuntimeOptions,
  type OrderSupportSessionContext,
} from "./order-support-runtime.js";
export { createOrderSupportServer, type OrderSupportServerOptions } from "./create-order-support-server.js";
export { SessionTokens, type TokenCheck } from "./session-tokens.js";
export {
  describeServerError,
  HttpError,
  httpErrorOf,
  statusOfCode,
  type HttpErrorBody,
  type HttpErrorStatus,
} from "./http-errors.js";
export { listen, type Listening } from "./listen.js";
export type { OrderSupportClient } from "./session-client-port.js";
export { ProgressRenderer, type ProgressOutput, type ProgressRendererOptions } from "./progress-renderer.js";
export {
  describeProgress,
  readDemoSessionProgress,
  runTerminalDemo,
  type DemoSessionProgress,
  type TerminalDemoOptions,
  type TerminalDemoResult,
  type TurnResult,
} from "./run-terminal-demo.js";
export {
  approveAutomatically,
  askOnTerminal,
  askYesNo,
  rejectAutomatically,
  type ApprovalDecider,
  type ApprovalDecision,
} from "./approval-deciders.js";
export { defaultWebDir, mountOrderSupportPage, type OrderSupportPageOptions } from "./order-support-page.js";
export {
  connectWarehouse,
  warehouseReleases,
  warehouseServer,
  warehouseServerScript,
  type WarehouseOptions,
  type WarehouseRelease,
} from "./warehouse.js";
