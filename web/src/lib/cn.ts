import { type ClassValue, clsx } from 'clsx';
import { twMerge } from 'tailwind-merge';

/** Class names joined, later Tailwind utilities winning over earlier ones (the shadcn helper). */
export const cn = (...inputs: ClassValue[]): string => twMerge(clsx(inputs));
