import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ChangeEvent, useEffect, useRef, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { useToast } from '@/components/toast';
import { formatNumber } from '@/lib/format';
import { type CsvPreview, parseCsvPreview } from './logic';
import { isRunning, JobErrors, type JobStatus, ProgressBar, Status } from './parts';

const MAX_BYTES = 5 * 1024 * 1024;

/** CSV import: pick a file, see its first rows as the server will read them, upload, follow the job to the end. */
export function ImportDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const queryClient = useQueryClient();
  const notify = useToast();
  const [file, setFile] = useState<File | undefined>();
  const [preview, setPreview] = useState<CsvPreview | undefined>();
  const [localError, setLocalError] = useState<string | undefined>();
  const [jobId, setJobId] = useState<string | undefined>();
  const notified = useRef<string | undefined>(undefined);

  const pick = async (e: ChangeEvent<HTMLInputElement>) => {
    const f = e.target.files?.[0];
    setPreview(undefined);
    setLocalError(undefined);
    setFile(f);
    if (!f) return;
    if (f.size > MAX_BYTES) {
      setLocalError(`The file is ${formatNumber(Math.ceil(f.size / 1024))} KB; at most 5 MB can be imported at once (split it).`);
      return;
    }
    // The first 64 KB are enough for the header and the first rows.
    const text = await f.slice(0, 64 * 1024).text();
    setPreview(parseCsvPreview(text, 5));
  };

  const upload = useMutation({
    mutationFn: async (f: File) => {
      const form = new FormData();
      form.append('file', f, f.name);
      return unwrap(api.POST('/contacts/import', { body: { file: '' }, bodySerializer: () => form }));
    },
    onSuccess: (r) => setJobId(r.jobId),
  });

  const reset = () => {
    setFile(undefined);
    setPreview(undefined);
    setLocalError(undefined);
    setJobId(undefined);
    upload.reset();
  };

  const job = useQuery({
    queryKey: ['contacts', 'import-job', jobId],
    enabled: Boolean(jobId),
    queryFn: () => unwrap(api.GET('/contacts/import/{jobId}', { params: { path: { jobId: jobId ?? '' } } })) as Promise<JobStatus>,
    refetchInterval: (q) => (isRunning(q.state.data) ? 1000 : false),
  });

  const done = job.data && !isRunning(job.data) ? job.data : undefined;
  useEffect(() => {
    if (!done || notified.current === done.id) return;
    notified.current = done.id;
    void queryClient.invalidateQueries({ queryKey: ['contacts'] });
    notify(
      done.status === 'COMPLETED'
        ? { title: 'Import finished', description: `${formatNumber(done.processed)} rows imported${done.failed ? `, ${formatNumber(done.failed)} failed` : ''}.`, tone: done.failed ? 'bad' : 'ok' }
        : { title: 'Import failed', description: done.errors[0]?.message ?? 'The file could not be imported.', tone: 'bad' },
    );
  }, [done, notify, queryClient]);

  const apiError = upload.error instanceof ApiError ? upload.error : undefined;
  const noEmail = preview && preview.header.length > 0 && preview.emailColumn === -1;
  const status = job.data;

  const banner =
    !open && jobId ? (
      <div role="status" className="mb-3 grid gap-2 rounded-md border border-border bg-surface px-4 py-3">
        {status && !isRunning(status) ? (
          <p className="text-sm">
            Import of {file?.name ?? 'the file'} {status.status === 'COMPLETED' ? 'finished' : 'failed'}: {formatNumber(status.processed)} imported, {formatNumber(status.failed)} failed.
          </p>
        ) : (
          <ProgressBar label={`Importing ${file?.name ?? 'the file'}`} value={status ? status.processed + status.failed : 0} max={status ? Math.max(status.total, status.processed + status.failed) : 0} />
        )}
        <div className="flex gap-2">
          <Button size="sm" variant="secondary" onClick={() => onOpenChange(true)}>
            {done ? 'Show details' : 'Show progress'}
          </Button>
          {done ? (
            <Button size="sm" variant="ghost" onClick={reset}>
              Dismiss
            </Button>
          ) : null}
        </div>
      </div>
    ) : null;

  return (
    <>
      {banner}
      <Dialog
        open={open}
        onOpenChange={(o) => {
          if (!o && !jobId) reset();
          if (!o && done) reset();
          onOpenChange(o);
        }}
        title="Import contacts"
        description="A CSV file of at most 5 MB with a header row: an email column, optionally subscribed (true/false), every other column becomes contact data. Existing contacts are updated."
        footer={
          jobId ? (
            <Button
              variant={done ? 'primary' : 'secondary'}
              onClick={() => {
                if (done) reset();
                onOpenChange(false);
              }}
            >
              {done ? 'Done' : 'Close (the import goes on)'}
            </Button>
          ) : (
            <>
              <Button variant="secondary" onClick={() => onOpenChange(false)}>
                Cancel
              </Button>
              <Button disabled={!file || !preview || Boolean(localError) || Boolean(noEmail) || upload.isPending} onClick={() => file && upload.mutate(file)}>
                {upload.isPending ? 'Uploading…' : 'Import'}
              </Button>
            </>
          )
        }
      >
        {!jobId ? (
          <div className="grid gap-3">
            <Field label="CSV file" error={localError ?? apiError?.fieldMessage('file') ?? (apiError && apiError.fields.length === 0 ? apiError.message : undefined)}>
              <Input type="file" accept=".csv,text/csv" onChange={(e) => void pick(e)} className="py-1.5" />
            </Field>
            {preview ? (
              preview.header.length === 0 ? (
                <p role="alert" className="text-sm text-bad">
                  The file is empty.
                </p>
              ) : (
                <div className="grid gap-2">
                  {noEmail ? (
                    <p role="alert" className="text-sm text-bad">
                      The header row has no email column (found: {preview.header.join(', ')}).
                    </p>
                  ) : (
                    <p className="text-xs text-fg-muted">
                      {preview.header.length} columns: email{preview.subscribedColumn >= 0 ? ', subscribed' : ''} and {preview.header.length - 1 - (preview.subscribedColumn >= 0 ? 1 : 0)} data{' '}
                      {preview.header.length - 1 - (preview.subscribedColumn >= 0 ? 1 : 0) === 1 ? 'key' : 'keys'}. The first rows as they will be read:
                    </p>
                  )}
                  <div className="max-h-56 overflow-auto rounded-md border border-border">
                    <table aria-label="Preview of the file" className="w-full text-xs">
                      <thead className="bg-muted text-left text-fg-muted">
                        <tr>
                          <th scope="col" className="px-2 py-1 text-right font-medium">
                            Row
                          </th>
                          {preview.header.map((h, i) => (
                            <th key={i} scope="col" className="px-2 py-1 font-medium whitespace-nowrap">
                              {h || <span className="italic">(ignored)</span>}
                              {i === preview.emailColumn || i === preview.subscribedColumn ? null : h ? (
                                <Badge className="ml-1" tone="neutral">
                                  data
                                </Badge>
                              ) : null}
                            </th>
                          ))}
                        </tr>
                      </thead>
                      <tbody>
                        {preview.rows.map((row, r) => (
                          <tr key={r} className="border-t border-border">
                            <td className="px-2 py-1 text-right tabular-nums text-fg-muted">{r + 1}</td>
                            {preview.header.map((_, c) => (
                              <td key={c} className="max-w-48 truncate px-2 py-1">
                                {row[c] ?? ''}
                              </td>
                            ))}
                            {row.length !== preview.header.length ? (
                              <td className="px-2 py-1 whitespace-nowrap text-bad">
                                {row.length} columns; the header has {preview.header.length}
                              </td>
                            ) : null}
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                  {preview.truncated ? <p className="text-xs text-fg-muted">Only the first {preview.rows.length} rows are shown.</p> : null}
                </div>
              )
            ) : null}
          </div>
        ) : (
          <div className="grid gap-3" aria-live="polite">
            {status ? (
              <>
                <Status className="text-sm" tone={status.status === 'COMPLETED' ? (status.failed ? 'warn' : 'ok') : status.status === 'FAILED' ? 'bad' : 'neutral'}>
                  {status.status === 'PENDING' ? 'Waiting to start…' : status.status === 'PROCESSING' ? 'Importing…' : status.status === 'COMPLETED' ? 'Import complete.' : 'Import failed.'}
                </Status>
                <ProgressBar label="Rows read" value={status.processed + status.failed} max={Math.max(status.total, status.processed + status.failed)} />
                <p className="text-sm text-fg-muted">
                  {formatNumber(status.processed)} imported · {formatNumber(status.failed)} failed
                </p>
                <JobErrors job={status} rowLabel={(row) => (row === 0 ? 'File' : `Row ${formatNumber(row)}`)} hint="Rows are counted from the first row after the header; fix them and import the file again (imported rows are updated, never duplicated)." />
              </>
            ) : job.isError ? (
              <p role="alert" className="text-bad">
                {job.error.message}
              </p>
            ) : (
              <p className="text-sm text-fg-muted">Uploaded; starting…</p>
            )}
          </div>
        )}
      </Dialog>
    </>
  );
}
