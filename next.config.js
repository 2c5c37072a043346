/** @type {import('next').NextConfig} */
const nextConfig = {
  // Database drivers run as plain Node modules rather than bundled into the server build:
  // node-postgres probes optional native bindings at runtime, and the Prisma adapter must
  // share that very module instance.
  serverExternalPackages: ['pg', '@prisma/adapter-pg'],
  // This directory is the app's root even when a parent directory holds another lockfile.
  turbopack: { root: import.meta.dirname },
  poweredByHeader: false,
};

export default nextConfig;
