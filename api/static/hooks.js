// Where optional parts of the page hook in, without main.js knowing them: a module
// loaded by its own <script type="module"> tag (Web Push, a game review page) imports
// `page` and sets what it offers. Nothing here is required.
export const page = {
  reviewUrl: null, // (view) => a URL: a REVIEW link shows on game over
  onView: [], // functions called with (old, view) after each view is drawn
  onTable: [], // functions called with ({tableId, token}) when the page enters a table
};
