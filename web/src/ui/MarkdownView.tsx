import { renderMarkdown } from "./markdown";

/**
 * Markdown from an agent, rendered by the safe renderer: the HTML it sets
 * holds only tags the renderer wrote, with every source character escaped.
 */
export function Markdown({ text, id, className }: { text: string; id?: string | undefined; className?: string }) {
  return <div id={id} class={`markdown ${className ?? ""}`} dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
}
