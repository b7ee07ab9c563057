import type { PageModule } from '@/app/modules';
import { InvitationPage } from './InvitationPage';
import { LoginPage } from './LoginPage';
import { ResetPasswordPage } from './ResetPasswordPage';
import { SignupPage } from './SignupPage';
import { VerifyEmailPage } from './VerifyEmailPage';

/** The signed-out pages; their paths are the ones the server's emails and redirects link to. */
export const page: PageModule = {
  outside: [
    { path: 'login', element: <LoginPage /> },
    { path: 'signup', element: <SignupPage /> },
    { path: 'verify-email', element: <VerifyEmailPage /> },
    { path: 'reset-password', element: <ResetPasswordPage /> },
    { path: 'invitations', element: <InvitationPage /> },
  ],
};
