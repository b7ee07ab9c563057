import { z } from 'zod';
import { UPLOAD_CONTENT_TYPES } from '../../db/schema.js';
import { cursorLimitField, cursorListOf } from '../../http/paging.js';

export const Upload = z
  .object({
    id: z.uuid().describe('Pass to DELETE /uploads/:id'),
    url: z.string().describe('Public address of the image (`<PUBLIC_URL>/files/<key>`), for template bodies; cached by browsers and CDNs for a year'),
    key: z.string().describe('Name of the stored object: `<uuid>.<jpg|png|gif|webp>` (unguessable)'),
    filename: z.string().describe('The name the file was uploaded with (for display; never part of the URL)'),
    contentType: z.enum(UPLOAD_CONTENT_TYPES).describe('Detected from the bytes, not from the name or the declared type'),
    size: z.int().describe('Bytes stored, after metadata was removed: what counts against the quota'),
    width: z.int().describe('Pixels, after the EXIF orientation was applied'),
    height: z.int().describe('Pixels (of one frame, for an animation)'),
    createdAt: z.iso.datetime(),
  })
  .meta({
    id: 'Upload',
    examples: [
      {
        id: '0197a0b4-6c1e-7d2a-9f3b-2a1c4e5d6f70',
        url: 'https://mail.example.com/files/0197a0b4-6c1e-7d2a-9f3b-2a1c4e5d6f70.png',
        key: '0197a0b4-6c1e-7d2a-9f3b-2a1c4e5d6f70.png',
        filename: 'logo.png',
        contentType: 'image/png',
        size: 18422,
        width: 600,
        height: 200,
        createdAt: '2025-06-01T12:00:00.000Z',
      },
    ],
  });
export type Upload = z.infer<typeof Upload>;

export const UploadList = cursorListOf(Upload);
export type UploadList = z.infer<typeof UploadList>;

export const ListUploadsQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The cursor of the previous page'),
});
export type ListUploadsQuery = z.infer<typeof ListUploadsQuery>;

export const UploadIdParams = z.object({ id: z.string() });

export const UploadUsage = z
  .object({
    usedBytes: z.int().describe('Bytes of the project\'s stored images'),
    quotaBytes: z.int().describe('The per-project quota (UPLOAD_QUOTA_MB)'),
    files: z.int().describe('Number of stored images'),
    maxFileBytes: z.int().describe('Largest file one upload may send'),
  })
  .meta({ id: 'UploadUsage' });
export type UploadUsage = z.infer<typeof UploadUsage>;

export const FileKeyParams = z.object({ key: z.string().describe('`<uuid>.<ext>`, the `key` of an upload') });
