import { useCallback } from 'react';
import { useSearchParams } from 'react-router';

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
