/** Ports for tests: the same helpers npm start uses. */
export { freePort, isListening } from '../../dev/ports';
