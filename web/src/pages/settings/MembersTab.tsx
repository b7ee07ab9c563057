import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useProject } from '@/app/project';
import { projectsKey, useMe } from '@/app/session';
import { ErrorState } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Select } from '@/components/ui/input';
import { SkeletonRows, TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { TimeAgo } from './parts';

type Role = components['schemas']['Member']['role'];
type Member = components['schemas']['Member'];
type Invitation = components['schemas']['Invitation'];

const ROLES: { value: Role; label: string }[] = [
  { value: 'MEMBER', label: 'Member' },
  { value: 'ADMIN', label: 'Admin' },
  { value: 'OWNER', label: 'Owner' },
];
const ROLE_HINT: Record<Role, string> = {
  MEMBER: 'Uses the project: contacts, templates, campaigns… No settings or keys.',
  ADMIN: 'Also settings, API keys, webhooks and members.',
  OWNER: 'Everything, with billing, reset and deletion.',
};
const roleLabel = (r: Role) => r.charAt(0) + r.slice(1).toLowerCase();

const membersKey = (projectId: string) => ['projects', projectId, 'members'] as const;

function InviteForm() {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('MEMBER');
  const invite = useMutation({
    mutationFn: () => unwrap(api.POST('/projects/{id}/members', { params: { path: { id: project.id } }, body: { email, role } })),
    onSuccess: (res) => {
      void queryClient.invalidateQueries({ queryKey: membersKey(project.id) });
      notify(res.status === 'ADDED' ? { title: `${res.member.email} joined the project`, description: 'They already had an account.' } : { title: `Invitation sent to ${res.invitation.email}`, description: 'The link works for 7 days.' });
      setEmail('');
    },
  });
  const error = invite.error instanceof ApiError ? invite.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  const roles = project.role === 'OWNER' ? ROLES : ROLES.filter((r) => r.value !== 'OWNER');
  return (
    <form onSubmit={submit} className="grid gap-3 sm:grid-cols-[1fr_14rem_auto] sm:items-start">
      <Field label="Email address" error={error?.fieldMessage('email') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
        <Input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required placeholder="teammate@example.com" autoComplete="off" />
      </Field>
      <Field label="Role" error={error?.fieldMessage('role')} hint={ROLE_HINT[role]}>
        <Select value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {roles.map((r) => (
            <option key={r.value} value={r.value}>
              {r.label}
            </option>
          ))}
        </Select>
      </Field>
      <Button type="submit" className="sm:mt-6" disabled={invite.isPending}>
        Invite
      </Button>
    </form>
  );
}

function MemberRow({ member, canManage, isMe }: { member: Member; canManage: boolean; isMe: boolean }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const navigate = useNavigate();
  const [confirm, setConfirm] = useState(false);
  const changeRole = useMutation({
    mutationFn: (role: Role) => unwrap(api.PATCH('/projects/{id}/members/{userId}', { params: { path: { id: project.id, userId: member.userId } }, body: { role } })),
    onSuccess: (m) => {
      void queryClient.invalidateQueries({ queryKey: membersKey(project.id) });
      if (isMe) void queryClient.invalidateQueries({ queryKey: projectsKey });
      notify({ title: `${m.email} is now ${roleLabel(m.role).toLowerCase()}` });
    },
    onError: (err) => notify({ title: 'Could not change the role', description: err.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/projects/{id}/members/{userId}', { params: { path: { id: project.id, userId: member.userId } } })),
    onSuccess: () => {
      setConfirm(false);
      if (isMe) {
        void queryClient.invalidateQueries({ queryKey: projectsKey });
        void navigate('/');
        return;
      }
      void queryClient.invalidateQueries({ queryKey: membersKey(project.id) });
      notify({ title: `${member.email} removed` });
    },
    onError: (err) => notify({ title: isMe ? 'Could not leave the project' : 'Could not remove the member', description: err.message, tone: 'bad' }),
  });
  // ADMINs never touch OWNERs; nobody raises their own role.
  const editable = canManage && !(project.role === 'ADMIN' && member.role === 'OWNER');
  const options = ROLES.filter((r) => (project.role === 'OWNER' || r.value !== 'OWNER' || member.role === 'OWNER') && (!isMe || ROLES.findIndex((x) => x.value === r.value) <= ROLES.findIndex((x) => x.value === member.role)));
  return (
    <TR>
      <TD>
        {member.email} {isMe ? <Badge>you</Badge> : null}
      </TD>
      <TD>
        {editable ? (
          <Select aria-label={`Role of ${member.email}`} className="h-8 w-32" value={member.role} disabled={changeRole.isPending} onChange={(e) => changeRole.mutate(e.target.value as Role)}>
            {options.map((r) => (
              <option key={r.value} value={r.value}>
                {roleLabel(r.value)}
              </option>
            ))}
          </Select>
        ) : (
          roleLabel(member.role)
        )}
      </TD>
      <TD>
        <TimeAgo iso={member.createdAt} />
      </TD>
      <TD className="text-right">
        {editable || isMe ? (
          <Button size="sm" variant="ghost" onClick={() => setConfirm(true)}>
            {isMe ? 'Leave' : 'Remove'}
          </Button>
        ) : null}
        <ConfirmDialog
          open={confirm}
          onOpenChange={setConfirm}
          title={isMe ? `Leave ${project.name}?` : `Remove ${member.email}?`}
          description={
            isMe
              ? 'You lose access to this project at once; an owner or admin must invite you again.'
              : `${member.email} loses access at once. If they could see the secret key, rotate the keys afterwards.`
          }
          confirmLabel={isMe ? 'Leave project' : 'Remove member'}
          pending={remove.isPending}
          onConfirm={() => remove.mutate()}
        />
      </TD>
    </TR>
  );
}

function InvitationRow({ invitation, canManage }: { invitation: Invitation; canManage: boolean }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [confirm, setConfirm] = useState(false);
  const revoke = useMutation({
    mutationFn: () => unwrap(api.DELETE('/projects/{id}/invitations/{invitationId}', { params: { path: { id: project.id, invitationId: invitation.id } } })),
    onSuccess: () => {
      setConfirm(false);
      void queryClient.invalidateQueries({ queryKey: membersKey(project.id) });
      notify({ title: `Invitation to ${invitation.email} revoked` });
    },
    onError: (err) => notify({ title: 'Could not revoke the invitation', description: err.message, tone: 'bad' }),
  });
  const revocable = canManage && !(project.role === 'ADMIN' && invitation.role === 'OWNER');
  return (
    <TR>
      <TD>{invitation.email}</TD>
      <TD>{roleLabel(invitation.role)}</TD>
      <TD>{invitation.invitedBy?.email ?? <span className="text-fg-muted">a deleted account</span>}</TD>
      <TD>
        <TimeAgo iso={invitation.expiresAt} />
      </TD>
      <TD className="text-right">
        {revocable ? (
          <Button size="sm" variant="ghost" onClick={() => setConfirm(true)}>
            Revoke
          </Button>
        ) : null}
        <ConfirmDialog
          open={confirm}
          onOpenChange={setConfirm}
          title={`Revoke the invitation to ${invitation.email}?`}
          description="The link in the email stops working. You can invite the address again later."
          confirmLabel="Revoke invitation"
          pending={revoke.isPending}
          onConfirm={() => revoke.mutate()}
        />
      </TD>
    </TR>
  );
}

/** The project's members and pending invitations (GET/POST /projects/:id/members…). */
export function MembersTab() {
  const project = useProject();
  const me = useMe();
  const canManage = project.role !== 'MEMBER';
  const list = useQuery({ queryKey: membersKey(project.id), queryFn: () => unwrap(api.GET('/projects/{id}/members', { params: { path: { id: project.id } } })) });
  return (
    <div className="grid gap-6">
      {canManage ? (
        <Card>
          <CardHeader>
            <div>
              <CardTitle>Invite someone</CardTitle>
              <p className="mt-1 text-fg-muted">An address with an account joins at once; any other gets an email with a link valid for 7 days.</p>
            </div>
          </CardHeader>
          <CardBody>
            <InviteForm />
          </CardBody>
        </Card>
      ) : null}
      {list.error ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <>
          <section aria-labelledby="members-title" className="grid gap-2">
            <h2 id="members-title" className="text-sm font-semibold">
              Members
            </h2>
            <Table>
              <THead>
                <tr>
                  <TH>Email</TH>
                  <TH>Role</TH>
                  <TH>Joined</TH>
                  <TH>
                    <span className="sr-only">Actions</span>
                  </TH>
                </tr>
              </THead>
              <TBody>
                {list.isPending ? (
                  <SkeletonRows rows={2} columns={4} />
                ) : (
                  list.data.members.map((m) => <MemberRow key={m.userId} member={m} canManage={canManage} isMe={m.userId === me.data?.id} />)
                )}
              </TBody>
            </Table>
          </section>
          <section aria-labelledby="invitations-title" className="grid gap-2">
            <h2 id="invitations-title" className="text-sm font-semibold">
              Pending invitations
            </h2>
            {list.data && list.data.invitations.length === 0 ? (
              <p className="text-fg-muted">No pending invitations.{canManage ? ' Invite a teammate above.' : ''}</p>
            ) : (
              <Table aria-label="Pending invitations">
                <THead>
                  <tr>
                    <TH>Email</TH>
                    <TH>Role</TH>
                    <TH>Invited by</TH>
                    <TH>Expires</TH>
                    <TH>
                      <span className="sr-only">Actions</span>
                    </TH>
                  </tr>
                </THead>
                <TBody>{list.isPending ? <SkeletonRows rows={1} columns={5} /> : list.data.invitations.map((i) => <InvitationRow key={i.id} invitation={i} canManage={canManage} />)}</TBody>
              </Table>
            )}
          </section>
        </>
      )}
    </div>
  );
}
