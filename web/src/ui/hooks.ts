// Small hooks shared by the components.

import { useEffect, useReducer, useRef, useState } from "preact/hooks";

/** Re-renders the component whenever subscribe's listener is called. */
export function useSubscription(subscribe: (listener: () => void) => () => void): void {
  const [, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => subscribe(() => bump(undefined)), [subscribe]);
}

/** Re-renders every ms while active: a running countdown's seconds. */
export function useTicker(active: boolean, ms = 250): void {
  const [, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    if (!active) return undefined;
    const id = setInterval(() => bump(undefined), ms);
    return () => clearInterval(id);
  }, [active, ms]);
}

/**
 * A value that is recomputed only when key changes: the countdown's live
 * region text, which must not change with every passing second.
 */
export function useStable<T>(key: string, compute: () => T): T {
  const ref = useRef<{ key: string; value: T } | undefined>(undefined);
  if (ref.current?.key !== key) ref.current = { key, value: compute() };
  return ref.current.value;
}

/** The location hash, kept current. */
export function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return hash;
}

/** Element ids unique on the page, stable for a component's life. */
let nextId = 0;
export function useId(prefix: string): string {
  const ref = useRef<string | undefined>(undefined);
  if (ref.current === undefined) ref.current = `${prefix}-${++nextId}`;
  return ref.current;
}
