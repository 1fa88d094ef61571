/**
 * One session: its conversation loaded from the server, a `Chat` on `DurableChatTransport`, and a
 * loop that keeps the page in step with the session: it resumes the running turn once, then, while
 * this page streams nothing, waits for the session's next event (another tab's message, an approval
 * given elsewhere, the end of a stopped turn), loads the conversation again and resumes.
 */
import { Chat, useChat } from "@ai-sdk/react";
import { DurableChatTransport, type DurableUIMessage, type LoadedSession } from "@durable-agents/ui/client";
import { useEffect, useMemo, useRef, useState } from "react";
import type { SessionRef } from "./App";
import { ChatView } from "./ChatView";
import { Timeline } from "./Timeline";

export function SessionPage({ session }: { session: SessionRef }) {
  const transport = useMemo(
    () =>
      new DurableChatTransport({
        api: `/sessions/${encodeURIComponent(session.id)}/ui`,
        headers: { "x-session-token": session.token },
      }),
    [session.id, session.token],
  );
  const [loaded, setLoaded] = useState<LoadedSession | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);

  useEffect(() => {
    const abort = new AbortController();
    transport.load({ signal: abort.signal }).then(setLoaded, (error: unknown) => {
      if (!abort.signal.aborted) setLoadError(error instanceof Error ? error.message : String(error));
    });
    return () => abort.abort();
  }, [transport]);

  if (loadError) {
    return (
      <p role="alert" className="error">
        Could not open session {session.id}: {loadError}
      </p>
    );
  }
  if (!loaded) {
    return (
      <p role="status" className="loading">
        Loading the conversation…
      </p>
    );
  }
  return <LoadedSessionPage session={session} transport={transport} loaded={loaded} />;
}

function LoadedSessionPage({
  session,
  transport,
  loaded,
}: {
  session: SessionRef;
  transport: DurableChatTransport;
  loaded: LoadedSession;
}) {
  const [streamError, setStreamError] = useState<string | null>(null);
  const chat = useMemo(
    () =>
      new Chat<DurableUIMessage>({
        id: session.id,
        messages: loaded.messages,
        transport,
        sendAutomaticallyWhen: transport.hasUnsentDecisions,
        onError: (error) => setStreamError(error.message),
      }),
    [session.id, loaded, transport],
  );
  const helpers = useChat<DurableUIMessage>({ chat });
  const [syncing, setSyncing] = useState(false);
  const mounted = useRef(true);

  useEffect(() => {
    mounted.current = true;
    const abort = new AbortController();
    const signal = abort.signal;
    const busy = () => chat.status === "submitted" || chat.status === "streaming";
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    void (async () => {
      await chat.resumeStream();
      while (!signal.aborted) {
        if (busy()) {
          await pause(100);
          continue;
        }
        let changed = false;
        try {
          changed = await transport.waitForChange({ signal });
        } catch {
          // The server is away (restarting): try again in a moment.
          await pause(1000);
          continue;
        }
        if (!changed || busy() || signal.aborted) continue;
        setSyncing(true);
        try {
          const again = await transport.load({ signal });
          if (busy() || signal.aborted) continue;
          chat.messages = again.messages;
          setStreamError(null);
          await chat.resumeStream();
        } catch {
          await pause(1000);
        } finally {
          if (mounted.current) setSyncing(false);
        }
      }
    })();
    return () => {
      mounted.current = false;
      abort.abort();
      // This page goes away, the session does not: stop reading without cancelling the turn.
      transport.close();
      void chat.stop();
    };
  }, [chat, transport]);

  return (
    <main className="session">
      <ChatView
        session={session}
        helpers={helpers}
        transport={transport}
        syncing={syncing}
        streamError={streamError}
        clearStreamError={() => setStreamError(null)}
      />
      <Timeline messages={helpers.messages} />
    </main>
  );
}
