import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { ApiError, setSignedOutHandler } from '@/api/client';
import { ToastProvider } from '@/components/toast';
import { ROUTES } from './routes';
import { meKey } from './session';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change on its own; a 5xx or a dropped connection may.
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

// A session that ends while the app is open: asking who the user is again leads to sign-in
// (RequireSession), which comes back to the same page afterwards.
setSignedOutHandler(() => void queryClient.invalidateQueries({ queryKey: meKey }));

const router = createBrowserRouter(ROUTES, { basename: '/app' });

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <ToastProvider>
        <RouterProvider router={router} />
      </ToastProvider>
    </QueryClientProvider>
  );
}
