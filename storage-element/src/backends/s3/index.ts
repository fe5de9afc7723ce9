/** The S3 backend (AWS SDK v3, multipart through lib-storage): capacity = soft limit − stored bytes. */
export * from './s3-backend.ts';
