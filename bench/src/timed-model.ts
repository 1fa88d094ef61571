/**
 * An SDK `Model` around the deterministic `ScriptedModel`: answers exactly as it does, and tells the
 * step clock when each model call ended and when each text chunk was produced.
 */
import type { Model, ModelRequest, ModelResponse, StreamEvent } from "@openai/agents";
import { ScriptedModel } from "@durable-agents/openai-agents/testing";
import type { ProducedChunk, StepClock } from "./step-clock.js";

export class TimedModel implements Model {
  readonly inner: ScriptedModel;

  /**
   * `streamChunks`: chunks a streamed answer is split into. `paceMs`: a pause before every chunk
   * after the first, as a real model's tokens arrive over time (0: all at once).
   */
  constructor(
    private readonly clock: StepClock,
    streamChunks = 3,
    private readonly paceMs = 0,
  ) {
    this.inner = new ScriptedModel({ streamChunks });
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const response = await this.inner.getResponse(request);
    this.clock.mark();
    return response;
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    let text = "";
    const chunks: ProducedChunk[] = [];
    for await (const event of this.inner.getStreamedResponse(request)) {
      if (event.type === "output_text_delta") {
        if (this.paceMs > 0 && chunks.length > 0) await new Promise((resolve) => setTimeout(resolve, this.paceMs));
        text += event.delta;
        chunks.push({ end: text.length, at: performance.now() });
      }
      yield event;
    }
    if (chunks.length > 0) this.clock.recordAnswer(text, chunks);
    this.clock.mark();
  }
}
