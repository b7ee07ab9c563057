import { useCallback } from 'react';
import { useSearchParams } from 'react-router';

/**
 * One query-string parameter as state (UI.md: filters, search, sort, tab and cursor live in the
 * URL, so a view can be shared and restored with the back button). Setting `undefined` or ''
 * removes it; `resetCursor` drops `cursor` too (a new filter starts from the first page).
 */
export function useUrlParam(name: string): [string | undefined, (value: string | undefined, opts?: { resetCursor?: boolean; replace?: boolean }) => void] {
  const [params, setParams] = useSearchParams();
  const value = params.get(name) ?? undefined;
  const set = useCallback(
    (next: string | undefined, opts: { resetCursor?: boolean; replace?: boolean } = {}) => {
      setParams(
        (current) => {
          const copy = new URLSearchParams(current);
          if (next === undefined || next === '') copy.delete(name);
          else copy.set(name, next);
          if (opts.resetCursor) copy.delete('cursor');
          return copy;
        },
        { replace: opts.replace ?? false },
      );
    },
    [name, setParams],
  );
  return [value, set];
}

/**
 * Sets several query-string parameters in one navigation (two useUrlParam setters called in
 * one event would each start from the same old query and the second would undo the first).
 * undefined or '' removes a parameter.
 */
export function useSetUrlParams(): (values: Record<string, string | undefined>, opts?: { replace?: boolean }) => void {
  const [, setParams] = useSearchParams();
  return useCallback(
    (values, opts = {}) => {
      setParams(
        (current) => {
          const copy = new URLSearchParams(current);
          for (const [k, v] of Object.entries(values)) {
            if (v === undefined || v === '') copy.delete(k);
            else copy.set(k, v);
          }
          return copy;
        },
        { replace: opts.replace ?? false },
      );
    },
    [setParams],
  );
}
