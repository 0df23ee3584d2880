/**
 * The test run's workflow bundle: every production workflow plus test-only ones, bundled once
 * per run. Test-only workflows live here, never in workflows/.
 */
export * from '../../workflows';
export * from './round-trip';
